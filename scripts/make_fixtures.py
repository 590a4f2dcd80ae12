#!/usr/bin/env python3
"""Regenerates the fixtures of the tf.node tests under __test__/fixtures/.

Made by tools other than this project, so the tests check tfjs-node-rs against real artifacts:

- saved_model/keras_mlp      a Keras 3 model exported with `model.export()`
- saved_model/multi_sig      a tf.Module with several signatures (float32, int32, bool)
- saved_model/dtypes         a tf.Module over int64, string, uint8 and bool tensors
- saved_model/edges          int64 values beyond int32 (in and out), and inputs whose
                             signature shapes are stricter than what TF checks when run
  Each directory holds `expected.json`: the signatures as Python reads them, and for each
  signature the inputs fed and the outputs Python TensorFlow computed.
- graph_model/               a frozen TF graph (tf.function, variables folded to constants)
  written in the tfjs graph-model format (model.json + weights.bin), with the output Python
  computed, as tensorflowjs_converter lays it out.
- graph_model_binary/        the same graph as a binary GraphDef `model.pb` beside
                             `weights_manifest.json` (the form tfjs-converter wrote before
                             model.json), serialized by Python's protobuf from model.json.
- layers_tfjs_node/          a LayersModel saved with `model.save('file://...')` by the real
  @tensorflow/tfjs-node 4.22 (when it is installed; set TFJS_NODE_PEER to its app directory),
  with the predictions tfjs-node computed.
- ../../benches/fixtures/graph_convnet/   the GraphModel of `npm run bench` (benches/models.js
  graph-model): a small Keras 3 convnet (seeded weights), exported as a SavedModel and converted
  by `tensorflowjs_converter`'s own code (the `tensorflowjs` package from PyPI); only with the
  `bench` argument. The converter's install: scripts/make_fixtures.converter-requirements.txt.
- images/                    small images written by Pillow, with `expected.json` holding the
  pixels Pillow decodes from each file (decoded independently of TensorFlow).

Requirements: Python 3.11 and `pip install tensorflow-cpu==2.21.0 pillow` (see
scripts/make_fixtures.requirements.txt). Run: `python scripts/make_fixtures.py`.
"""

import json
import os
import shutil
import sys

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "__test__", "fixtures")


def to_json(value):
    """A tensor or array as {dtype, shape, values}; strings as UTF-8 text, int64 as strings."""
    arr = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
    if arr.dtype.kind in ("S", "O"):
        values = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in arr.reshape(-1)]
        dtype = "string"
    elif arr.dtype == np.int64:
        values = [str(int(v)) for v in arr.reshape(-1)]
        dtype = "int64"
    elif arr.dtype == np.bool_:
        values = [bool(v) for v in arr.reshape(-1)]
        dtype = "bool"
    else:
        values = [v.item() for v in arr.reshape(-1)]
        dtype = str(arr.dtype)
    return {"dtype": dtype, "shape": list(arr.shape), "values": values}


def signatures_of(path):
    """The signature defs as Python's loader sees them, without __saved_model_init_op."""
    import tensorflow as tf
    from tensorflow.python.saved_model import loader_impl

    proto = loader_impl.parse_saved_model(path)
    metas = []
    for mg in proto.meta_graphs:
        sigs = {}
        for key, sig in mg.signature_def.items():
            if key == "__saved_model_init_op":
                continue

            def infos(m):
                return {
                    k: {
                        "name": v.name,
                        "tfDtype": tf.dtypes.as_dtype(v.dtype).as_datatype_enum,
                        "shape": None
                        if v.tensor_shape.unknown_rank
                        else [d.size for d in v.tensor_shape.dim],
                    }
                    for k, v in m.items()
                }

            sigs[key] = {"inputs": infos(sig.inputs), "outputs": infos(sig.outputs)}
        metas.append({"tags": list(mg.meta_info_def.tags), "signatureDefs": sigs})
    return metas


def record(path, cases):
    """Runs each (signature, inputs) case through the reloaded model; writes expected.json."""
    import tensorflow as tf

    loaded = tf.saved_model.load(path)
    runs = []
    for sig, inputs in cases:
        fn = loaded.signatures[sig]
        outputs = fn(**{k: tf.constant(v) for k, v in inputs.items()})
        runs.append(
            {
                "signature": sig,
                "inputs": {k: to_json(np.asarray(v)) for k, v in inputs.items()},
                "outputs": {k: to_json(v) for k, v in outputs.items()},
            }
        )
    with open(os.path.join(path, "expected.json"), "w") as f:
        json.dump({"metaGraphs": signatures_of(path), "runs": runs}, f, indent=1)
        f.write("\n")


def fresh(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(os.path.dirname(path), exist_ok=True)


def keras_mlp(base):
    import keras

    keras.utils.set_random_seed(7)
    inputs = keras.Input(shape=(4,), name="features")
    hidden = keras.layers.Dense(5, activation="relu", name="hidden")(inputs)
    outputs = keras.layers.Dense(3, activation="softmax", name="probs")(hidden)
    model = keras.Model(inputs, outputs)
    path = os.path.join(base, "keras_mlp")
    fresh(path)
    model.export(path, format="tf_saved_model", verbose=False)
    x = np.array([[0.5, -1.0, 2.0, 0.25], [1.5, 0.0, -0.5, 3.0]], np.float32)
    record(path, [("serving_default", {"features": x})])


def multi_sig(base):
    import tensorflow as tf

    class Multi(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable([[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25]], name="w")
            self.b = tf.Variable([0.1, -0.2], name="b")

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
        def affine(self, x):
            return {"y": tf.matmul(x, self.w) + self.b}

        @tf.function(
            input_signature=[
                tf.TensorSpec([None], tf.int32, name="a"),
                tf.TensorSpec([None], tf.int32, name="b"),
            ]
        )
        def add(self, a, b):
            return {"sum": a + b, "product": a * b}

        @tf.function(input_signature=[tf.TensorSpec([2, 2], tf.float32, name="m")])
        def stats(self, m):
            return {
                "mean": tf.reduce_mean(m),
                "max": tf.reduce_max(m, axis=1),
                "positive": m > 0,
            }

    module = Multi()
    path = os.path.join(base, "multi_sig")
    fresh(path)
    tf.saved_model.save(
        module,
        path,
        signatures={
            "serving_default": module.affine,
            "add": module.add,
            "stats": module.stats,
        },
    )
    record(
        path,
        [
            ("serving_default", {"x": np.array([[1, 2, 3], [-1, 0, 0.5]], np.float32)}),
            ("add", {"a": np.array([1, 2, 3], np.int32), "b": np.array([10, -20, 7], np.int32)}),
            ("stats", {"m": np.array([[1, -2], [3.5, 0.5]], np.float32)}),
        ],
    )


def dtypes(base):
    import tensorflow as tf

    class DTypes(tf.Module):
        @tf.function(
            input_signature=[
                tf.TensorSpec([None], tf.int64, name="ids"),
                tf.TensorSpec([None], tf.string, name="words"),
                tf.TensorSpec([None, 3], tf.uint8, name="pixels"),
                tf.TensorSpec([], tf.bool, name="flag"),
            ]
        )
        def serve(self, ids, words, pixels, flag):
            return {
                "ids_doubled": ids * 2 + 1,
                "word_lengths": tf.strings.length(words),
                "shout": tf.strings.upper(words) + "!",
                "inverted": 255 - pixels,
                "pixel_sum": tf.reduce_sum(tf.cast(pixels, tf.int32), axis=1),
                "not_flag": tf.logical_not(flag),
            }

    module = DTypes()
    path = os.path.join(base, "dtypes")
    fresh(path)
    tf.saved_model.save(module, path, signatures={"serving_default": module.serve})
    record(
        path,
        [
            (
                "serving_default",
                {
                    "ids": np.array([3, -7, 1000000], np.int64),
                    "words": np.array([b"tf", b"node", "\u00e9t\u00e9".encode("utf-8")]),
                    "pixels": np.array([[0, 128, 255], [1, 2, 3]], np.uint8),
                    "flag": np.array(True),
                },
            )
        ],
    )


def graph_model(base):
    """A frozen graph in the tfjs graph-model format, as tensorflowjs_converter writes it."""
    import tensorflow as tf
    from google.protobuf import json_format
    from tensorflow.python.framework import convert_to_constants

    w = tf.constant([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], tf.float32)
    b = tf.constant([0.1, -0.2, 0.3], tf.float32)

    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32, name="x")])
    def f(x):
        return tf.nn.relu(tf.matmul(x, w) + b) * 2.0

    frozen = convert_to_constants.convert_variables_to_constants_v2(f.get_concrete_function())
    graph_def = frozen.graph.as_graph_def()
    weights = []
    data = bytearray()
    for node in graph_def.node:
        if node.op != "Const":
            continue
        value = tf.make_ndarray(node.attr["value"].tensor)
        if value.dtype != np.float32:
            value = value.astype(np.int32) if value.dtype.kind in "iu" else value
        dtype = {np.dtype(np.float32): "float32", np.dtype(np.int32): "int32"}[value.dtype]
        weights.append({"name": node.name, "shape": list(value.shape), "dtype": dtype})
        data += value.astype("<f4" if dtype == "float32" else "<i4").tobytes()
        # The converter keeps the node with its dtype and shape, and moves the values out.
        tensor = node.attr["value"].tensor
        shape = tensor.tensor_shape
        tensor.Clear()
        tensor.dtype = node.attr["dtype"].type
        tensor.tensor_shape.CopyFrom(shape)
    out_name = frozen.outputs[0].name
    model = {
        "format": "graph-model",
        "generatedBy": tf.__version__,
        "convertedBy": "scripts/make_fixtures.py",
        "modelTopology": json_format.MessageToDict(graph_def),
        "signature": {
            "inputs": {"x:0": {"name": "x:0", "dtype": "DT_FLOAT",
                               "tensorShape": {"dim": [{"size": "-1"}, {"size": "2"}]}}},
            "outputs": {out_name: {"name": out_name, "dtype": "DT_FLOAT"}},
        },
        "weightsManifest": [{"paths": ["weights.bin"], "weights": weights}],
    }
    path = os.path.join(base, "graph_model")
    fresh(path)
    os.makedirs(path)
    with open(os.path.join(path, "model.json"), "w") as fh:
        json.dump(model, fh)
    with open(os.path.join(path, "weights.bin"), "wb") as fh:
        fh.write(bytes(data))
    x = np.array([[1.0, 2.0], [-1.0, 0.5], [0.0, 0.0]], np.float32)
    with open(os.path.join(path, "expected.json"), "w") as fh:
        json.dump({"inputs": {"x": to_json(x)}, "outputs": {"y": to_json(f(x))}}, fh, indent=1)
        fh.write("\n")


def graph_model_binary(base):
    """graph_model/ as `model.pb` (binary GraphDef) + `weights_manifest.json` + weights."""
    from google.protobuf import json_format
    from tensorflow.core.framework import graph_pb2

    source = os.path.join(base, "graph_model")
    with open(os.path.join(source, "model.json")) as fh:
        model = json.load(fh)
    graph_def = json_format.ParseDict(model["modelTopology"], graph_pb2.GraphDef())
    path = os.path.join(base, "graph_model_binary")
    fresh(path)
    os.makedirs(path)
    with open(os.path.join(path, "model.pb"), "wb") as fh:
        fh.write(graph_def.SerializeToString())
    with open(os.path.join(path, "weights_manifest.json"), "w") as fh:
        json.dump(model["weightsManifest"], fh)
    shutil.copy(os.path.join(source, "weights.bin"), path)


TFJS_NODE_SCRIPT = r"""
const tf = require('@tensorflow/tfjs-node');
const fs = require('fs');
const out = process.argv[1];
(async () => {
  const model = tf.sequential();
  model.add(tf.layers.dense({units: 4, inputShape: [3], activation: 'tanh',
                             kernelInitializer: tf.initializers.glorotUniform({seed: 1})}));
  model.add(tf.layers.dense({units: 2, activation: 'softmax',
                             kernelInitializer: tf.initializers.glorotUniform({seed: 2})}));
  await model.save('file://' + out);
  const x = [[0.5, -1, 2], [0, 0.25, -0.75]];
  const y = model.predict(tf.tensor2d(x));
  fs.writeFileSync(out + '/expected.json', JSON.stringify(
      {inputs: {x: {dtype: 'float32', shape: [2, 3], values: x.flat()}},
       outputs: {y: {dtype: 'float32', shape: y.shape, values: Array.from(y.dataSync())}},
       savedBy: '@tensorflow/tfjs-node ' + tf.version['tfjs-node']}, null, 1) + '\n');
})();
"""


def tfjs_node_layers(base):
    """A LayersModel saved by the real @tensorflow/tfjs-node, when it is installed."""
    import subprocess

    app = os.environ.get("TFJS_NODE_PEER", os.path.expanduser("~/.cache/tfjs-node-peer/app"))
    if not os.path.isdir(os.path.join(app, "node_modules", "@tensorflow", "tfjs-node")):
        print(f"skipping layers_tfjs_node: no @tensorflow/tfjs-node under {app}")
        return
    path = os.path.join(base, "layers_tfjs_node")
    fresh(path)
    subprocess.run(["node", "-e", TFJS_NODE_SCRIPT, os.path.abspath(path)], cwd=app, check=True)


def images(base):
    from PIL import Image

    path = os.path.join(base, "images")
    fresh(path)
    os.makedirs(path)
    w, h = 8, 6

    def rgb(x, y):
        return (x * 30 + 10, y * 40 + 5, (x * y * 7) % 256)

    img = Image.new("RGB", (w, h))
    img.putdata([rgb(x, y) for y in range(h) for x in range(w)])
    img.save(os.path.join(path, "rgb.png"))
    img.save(os.path.join(path, "rgb.jpg"), quality=95)
    img.save(os.path.join(path, "rgb.bmp"))

    gray = Image.new("L", (w, h))
    gray.putdata([(x * 31 + y * 11) % 256 for y in range(h) for x in range(w)])
    gray.save(os.path.join(path, "gray.png"))
    gray.save(os.path.join(path, "gray.jpg"), quality=95)

    rgba = Image.new("RGBA", (w, h))
    rgba.putdata([rgb(x, y) + ((x + y) * 20 % 256,) for y in range(h) for x in range(w)])
    rgba.save(os.path.join(path, "rgba.png"))

    palette = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0), (0, 0, 0), (255, 255, 255)]
    frames = []
    for f in range(3):
        frame = Image.new("RGB", (w, h))
        frame.putdata([palette[(x + y + 2 * f) % 6] for y in range(h) for x in range(w)])
        frames.append(frame)
    frames[0].save(
        os.path.join(path, "anim.gif"),
        save_all=True,
        append_images=frames[1:],
        duration=100,
        loop=0,
        optimize=False,
        disposal=1,
    )

    def pixels(name, mode):
        im = Image.open(os.path.join(path, name))
        out = []
        for i in range(getattr(im, "n_frames", 1)):
            im.seek(i)
            frame = im.convert(mode)
            out.append([list(p) if isinstance(p, tuple) else [p] for p in (frame.get_flattened_data() if hasattr(frame, "get_flattened_data") else frame.getdata())])
        return {"width": im.width, "height": im.height, "frames": len(out), "mode": mode,
                "pixels": out}

    expected = {
        "rgb.png": pixels("rgb.png", "RGB"),
        "rgb.jpg": pixels("rgb.jpg", "RGB"),
        "rgb.bmp": pixels("rgb.bmp", "RGB"),
        "gray.png": pixels("gray.png", "L"),
        "gray.jpg": pixels("gray.jpg", "L"),
        "rgba.png": pixels("rgba.png", "RGBA"),
        "anim.gif": pixels("anim.gif", "RGB"),
    }
    with open(os.path.join(path, "expected.json"), "w") as f:
        json.dump(expected, f)
        f.write("\n")


def edges(base):
    import tensorflow as tf

    class Edges(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.int64, name="ids")])
        def wide(self, ids):
            return {"wide": ids * 2 + 10000000000, "narrow": ids + 1}

        @tf.function(
            input_signature=[
                tf.TensorSpec([], tf.float32, name="x"),
                tf.TensorSpec([1], tf.uint8, name="pixel"),
            ]
        )
        def loose(self, x, pixel):
            return {"doubled": x * 2.0, "pixel_plus": tf.cast(pixel, tf.int32) + 1}

    module = Edges()
    path = os.path.join(base, "edges")
    fresh(path)
    tf.saved_model.save(module, path, signatures={"serving_default": module.wide, "loose": module.loose})
    record(
        path,
        [
            ("serving_default", {"ids": np.array([1, 2, -3], np.int64)}),
            ("serving_default", {"ids": np.array([10000000000, -5], np.int64)}),
            ("loose", {"x": np.array(1.5, np.float32), "pixel": np.array([7], np.uint8)}),
        ],
    )


def bench_graph_model(path):
    """A small convnet as tensorflowjs_converter turns a SavedModel into a GraphModel."""
    import tempfile
    import types

    import keras

    # tensorflowjs imports tensorflow_decision_forests at load time, for TF-DF models only; the
    # TF-DF builds on PyPI fail to load under TF 2.21 (undefined symbols), and this model has
    # no TF-DF ops, so the converter gets an empty module in its place.
    sys.modules.setdefault("tensorflow_decision_forests",
                           types.ModuleType("tensorflow_decision_forests"))
    from tensorflowjs.converters import tf_saved_model_conversion_v2

    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.Input((28, 28, 1)),
        keras.layers.Conv2D(8, 3, activation="relu"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Conv2D(16, 3, activation="relu"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Flatten(),
        keras.layers.Dense(10, activation="softmax"),
    ])
    fresh(path)
    with tempfile.TemporaryDirectory() as tmp:
        saved = os.path.join(tmp, "saved_model")
        model.export(saved)
        tf_saved_model_conversion_v2.convert_tf_saved_model(saved, path)


def main():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    which = set(sys.argv[1:]) or {"saved_model", "graph_model", "tfjs_node", "images"}
    if "bench" in which:
        bench_graph_model(os.path.join(ROOT, "..", "..", "benches", "fixtures", "graph_convnet"))
    if "saved_model" in which:
        base = os.path.join(ROOT, "saved_model")
        keras_mlp(base)
        multi_sig(base)
        dtypes(base)
        edges(base)
    if "graph_model" in which:
        graph_model(os.path.join(ROOT, "model_io"))
        graph_model_binary(os.path.join(ROOT, "model_io"))
    if "tfjs_node" in which:
        tfjs_node_layers(os.path.join(ROOT, "model_io"))
    if "images" in which:
        images(ROOT)


if __name__ == "__main__":
    main()
