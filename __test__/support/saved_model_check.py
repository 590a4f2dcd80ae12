# What TensorFlow itself makes of SavedModels that tf.node.saveSavedModel wrote
# (__test__/saved_model_export.test.js): run with the Python of benches/keras's venv, given a JSON
# file of jobs; prints one JSON object.
#   {"models": [{"dir", "inputs": {key: {"shape", "dtype", "values"}}, "fineTune": bool}],
#    "layoutDir": where to write Python's own SavedModel of a dense layer}
import json
import os
import sys

import keras
import numpy as np
import tensorflow as tf
from tensorflow.core.framework import variable_pb2
from tensorflow.core.protobuf import saved_model_pb2

FINE_TUNE_STEPS = 3


def arrays(inputs):
    return {k: np.array(v["values"], dtype=v["dtype"]).reshape(v["shape"])
            for k, v in inputs.items()}


def values(outputs):
    return {k: {"shape": list(v.shape), "values": v.numpy().ravel().tolist()}
            for k, v in outputs.items()}


def fine_tune(loaded, signature, feed):
    """Losses of a few SGD steps on the trainable variables, towards zeros."""
    trainable = [v for v in loaded.variables if v.trainable]
    optimizer = keras.optimizers.SGD(0.1)
    losses = []
    for _ in range(FINE_TUNE_STEPS):
        with tf.GradientTape() as tape:
            out = list(signature(**feed).values())[0]
            loss = tf.reduce_mean(tf.square(out))
        grads = tape.gradient(loss, trainable)
        if any(g is None for g in grads):
            return None
        optimizer.apply_gradients(zip(grads, trainable))
        losses.append(float(loss))
    return losses


def check_model(job):
    loaded = tf.saved_model.load(job["dir"])
    signature = loaded.signatures["serving_default"]
    feed = {k: tf.constant(v) for k, v in arrays(job["inputs"]).items()}
    result = {
        "signatures": sorted(loaded.signatures.keys()),
        "inputs": {k: [d if d is not None else -1 for d in spec.shape]
                   for k, spec in signature.structured_input_signature[1].items()},
        "outputs": values(signature(**feed)),
        "variables": len(loaded.variables),
        "trainable": sum(1 for v in loaded.variables if v.trainable),
    }
    if len(feed) == 1:
        layer = keras.layers.TFSMLayer(job["dir"], call_endpoint="serving_default")
        result["tfsmLayer"] = values(layer(list(feed.values())[0]))
    if job.get("fineTune"):
        result["fineTune"] = fine_tune(loaded, signature, feed)
    return result


def meta_graph_facts(directory):
    with open(os.path.join(directory, "saved_model.pb"), "rb") as f:
        meta = saved_model_pb2.SavedModel.FromString(f.read()).meta_graphs[0]
    files = sorted(os.path.relpath(os.path.join(root, name), directory)
                   for root, _, names in os.walk(directory) for name in names)
    return {
        "files": files,
        "tags": list(meta.meta_info_def.tags),
        "saver": [meta.saver_def.filename_tensor_name, meta.saver_def.restore_op_name,
                  meta.saver_def.version],
        "collections": {key: sorted(variable_pb2.VariableDef.FromString(b).variable_name
                                    for b in meta.collection_def[key].bytes_list.value)
                        for key in sorted(meta.collection_def)},
        "signature": {k: [d.size for d in v.tensor_shape.dim]
                      for k, v in meta.signature_def["serving_default"].inputs.items()},
        "ops": sorted({node.op for node in meta.graph_def.node}),
    }


def python_saved_model(directory):
    """Python TF's own TF1 SavedModel of a dense layer (x[?, 3] @ kernel + bias)."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 3], name="x")
        kernel = tf.compat.v1.get_variable("dense/kernel", [3, 2], use_resource=True)
        bias = tf.compat.v1.get_variable("dense/bias", [2], use_resource=True)
        y = tf.matmul(x, kernel) + bias
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.saved_model.simple_save(session, directory, {"x": x}, {"y": y})


def main():
    with open(sys.argv[1]) as f:
        jobs = json.load(f)
    python_saved_model(jobs["layoutDir"])
    print(json.dumps({
        "models": [check_model(job) for job in jobs["models"]],
        "facts": [meta_graph_facts(job["dir"]) for job in jobs["models"]],
        "pythonFacts": meta_graph_facts(jobs["layoutDir"]),
    }))


main()
