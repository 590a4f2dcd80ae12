"""The Python Keras 3 peer of benches/worker.js: one task in this process, its result as JSON.

    python benches/keras/worker.py '<json task>' <out.json>

run.js starts it with the venv of benches/keras/setup.sh. Tasks: {kind: 'info'},
{kind: 'params', specs} (each model's parameter count, for __test__/benches.test.js), and
{kind: 'model', spec, predictCalls, fitEpochs}, where `spec` is benches/models.js's description
of the model (batch, shapes, optimizer and loss); the architectures are written here again, in
Keras, and run.js checks that their parameter counts equal the tfjs models'. The method is
worker.js's: build, compile, fit one epoch (first fit), fit `fitEpochs` epochs, one warm-up
predict (first predict), `predictCalls` timed predicts, predict with Keras's default batch size
of 32 as tfjs's. {kind: 'graph', ...} (the same fields) times the same model as bare TF graphs
instead, what tfjs-node-rs's call graphs run: its forward pass and its training step each as one
`tf.function`, called from Python with no Keras loop around them, and the GFLOP of each call
(`task_graph`). {kind: 'shapes', plan} is benches/shapes.js's run of inputs of many shapes on a bare TF graph (`task_shapes`).
"""

import json
import os
import re
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

layers = keras.layers


def process_age_ms():
    """Milliseconds since this process started, TF's import included, from /proc (in clock ticks:
    10 ms steps, fine beside Keras's seconds)."""
    with open("/proc/self/stat") as f:
        # Field 22 (starttime), counted after the command name's closing parenthesis.
        started = int(f.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
    return (time.clock_gettime(time.CLOCK_BOOTTIME) - started) * 1e3


def dense_tiny():
    return keras.Sequential([keras.Input((100,)), layers.Dense(200, activation="relu"),
                             layers.Dense(1)])


def dense_large():
    return keras.Sequential([keras.Input((100,)), layers.Dense(4000, activation="relu"),
                             layers.Dense(1000, activation="relu"),
                             layers.Dense(500, activation="relu"), layers.Dense(1)])


def convolutional(filters):
    return lambda: keras.Sequential([
        keras.Input((28, 28, 1)),
        layers.Conv2D(filters, 3, padding="valid"), layers.Activation("relu"),
        layers.Conv2D(filters, 3), layers.Activation("relu"),
        layers.MaxPooling2D(2), layers.Flatten(),
        layers.Dense(128, activation="relu"), layers.Dense(10, activation="softmax"),
    ])


def rnn(kind):
    # tfjs's GRU has only the reset-before convention (Keras 2's default), 60 fewer parameters.
    make = {"SimpleRNN": lambda: layers.SimpleRNN(20),
            "GRU": lambda: layers.GRU(20, reset_after=False),
            "LSTM": lambda: layers.LSTM(20)}[kind]
    return lambda: keras.Sequential([keras.Input((20, 20)), make()])


def mobilenet():
    return keras.applications.MobileNet(input_shape=(224, 224, 3), alpha=0.5, weights=None,
                                        classes=1000)


def attention():
    tx, ty, n_a, n_s, in_vocab, out_vocab = 30, 10, 32, 64, 38, 11
    x = keras.Input((tx, in_vocab))
    s0 = keras.Input((n_s,))
    c0 = keras.Input((n_s,))
    a = layers.Bidirectional(layers.LSTM(n_a, return_sequences=True,
                                         recurrent_activation="hard_sigmoid"),
                             merge_mode="concat")(x)
    repeator = layers.RepeatVector(tx)
    concatenator = layers.Concatenate(axis=-1)
    densor1 = layers.Dense(10, activation="tanh")
    densor2 = layers.Dense(1, activation="relu")
    activator = layers.Softmax(axis=1)
    dotor = layers.Dot(axes=1)
    decoder = layers.LSTM(n_s, return_state=True, recurrent_activation="hard_sigmoid")
    output_layer = layers.Dense(out_vocab, activation="softmax")
    s, c = s0, c0
    outputs = []
    for _ in range(ty):
        energies = densor2(densor1(concatenator([a, repeator(s)])))
        context = dotor([activator(energies), a])
        s, _, c = decoder(context, initial_state=[s, c])
        outputs.append(output_layer(s))
    return keras.Model([x, s0, c0], outputs)


def mnist_convnet():
    return keras.Sequential([
        keras.Input((28, 28, 1)),
        layers.Conv2D(32, 3, activation="relu"), layers.Conv2D(64, 3, activation="relu"),
        layers.MaxPooling2D(2), layers.Dropout(0.25), layers.Flatten(),
        layers.Dense(128, activation="relu"), layers.Dropout(0.5),
        layers.Dense(10, activation="softmax"),
    ])


def text_lstm(spec):
    return keras.Sequential([
        keras.Input((spec["inputShapes"][0][0],), dtype="int32"),
        layers.Embedding(spec["inputInts"], 32), layers.LSTM(32),
        layers.Dense(1, activation="sigmoid"),
    ])


def resnet_block():
    def conv_bn(x, relu):
        y = layers.BatchNormalization()(layers.Conv2D(16, 3, padding="same", use_bias=False)(x))
        return layers.ReLU()(y) if relu else y

    inputs = keras.Input((32, 32, 3))
    stem = conv_bn(inputs, True)
    branch = conv_bn(conv_bn(stem, True), False)
    out = layers.ReLU()(layers.Add()([stem, branch]))
    out = layers.Dense(10, activation="softmax")(layers.GlobalAveragePooling2D()(out))
    return keras.Model(inputs, out)


BUILDERS = {
    "dense-tiny": dense_tiny,
    "dense-large": dense_large,
    "convolutional-1filters": convolutional(1),
    "convolutional-32filters": convolutional(32),
    "rnn-SimpleRNN": rnn("SimpleRNN"),
    "rnn-GRU": rnn("GRU"),
    "rnn-LSTM": rnn("LSTM"),
    "mobilenet": mobilenet,
    "attention": attention,
    "mnist-convnet": mnist_convnet,
    "text-lstm": text_lstm,
    "resnet-block": resnet_block,
}

OPTIMIZERS = {"sgd": keras.optimizers.SGD, "adam": keras.optimizers.Adam,
              "rmsprop": keras.optimizers.RMSprop}


def snake(name):
    """tfjs's loss names are Keras's in camelCase."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def data(spec, shapes, ints=None):
    rng = np.random.default_rng()
    arrays = [rng.integers(0, ints, (spec["batch"], *s), dtype=np.int32) if ints else
              rng.uniform(size=(spec["batch"], *s)).astype(np.float32) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def build(spec):
    builder = BUILDERS[spec["name"]]
    model = builder(spec) if builder is text_lstm else builder()
    if spec["fit"]:
        fit = spec["fit"]
        lr = fit.get("learningRate")
        optimizer = OPTIMIZERS[fit["optimizer"]](**({} if lr is None else {"learning_rate": lr}))
        model.compile(optimizer=optimizer, loss=snake(fit["loss"]))
    return model


def time_fit(model, spec, xs, task):
    ys = data(spec, spec["outputShapes"])
    weight = model.trainable_weights[0]

    def fit(epochs):
        t0 = time.perf_counter()
        model.fit(xs, ys, batch_size=spec["batch"], epochs=epochs, verbose=0)
        weight.numpy()
        return (time.perf_counter() - t0) * 1e3

    try:
        first_ms = fit(1)
        epochs = task["fitEpochs"]
        return {"firstMs": first_ms, "ms": fit(epochs) / epochs, "epochs": epochs,
                "firstOnly": False}
    except Exception as e:  # reported in the cell, as worker.js does
        return {"error": f"{type(e).__name__}: {e}"}


def time_predict(model, xs, task):
    def call():
        t0 = time.perf_counter()
        model.predict(xs, batch_size=32, verbose=0)  # numpy arrays: read back
        return (time.perf_counter() - t0) * 1e3

    first_ms = call()
    call_ms = [call() for _ in range(task["predictCalls"])]
    return {"firstMs": first_ms, "ms": sum(call_ms) / len(call_ms), "calls": len(call_ms),
            "firstOnly": False, "callMs": call_ms}


def time_calls(call, calls):
    """`call` once to trace it, once more to warm it up, then `calls` times: the mean ms."""
    call()
    call()
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - t0) * 1e3 / calls


def gflop(concrete):
    """GFLOP of one call of a traced `tf.function`, as TF's profiler counts them from the ops'
    registered statistics (2 per multiply-add of a MatMul or convolution, about 1 per element
    of the rest): the work a call does, independent of any backend."""
    options = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
    options["output"] = "none"
    profile = tf.compat.v1.profiler.profile(graph=concrete.graph, options=options)
    return profile.total_float_ops / 1e9


def task_graph(task):
    """The model's predict (32 rows a call, as `predict`'s batches) and training step (the whole
    batch) as bare TF graphs: `tf.function`s of the Keras model's call and of a step that takes
    the gradients and applies the optimizer, every result read back as worker.js reads it."""
    spec = task["spec"]
    model = build(spec)
    xs = data(spec, spec["inputShapes"], spec["inputInts"])
    forward = tf.function(lambda x: model(x, training=False))
    batches = [xs[i:i + 32] for i in range(0, spec["batch"], 32)]

    def predict():
        for batch in batches:
            forward(batch).numpy()

    out = {"model": spec["name"], "predictMs": time_calls(predict, task["predictCalls"]),
           "predictGflop": sum(gflop(forward.get_concrete_function(b)) for b in batches)}
    if spec["fit"]:
        ys = data(spec, spec["outputShapes"])
        loss_fn = keras.losses.get(snake(spec["fit"]["loss"]))
        weights = model.trainable_weights

        @tf.function
        def step(x, y):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            model.optimizer.apply(tape.gradient(loss, weights), weights)

        def fit():
            step(xs, ys)
            weights[0].numpy()

        out["fitMs"] = time_calls(fit, task["fitEpochs"])
        out["fitGflop"] = gflop(step.get_concrete_function(xs, ys))
    return out


def task_shapes(task):
    """benches/shapes.js's run on a bare TF graph: its convnet as one `tf.function` over inputs of
    any height and width (one trace, as this package's call graph for every shape), a fresh model
    and function per run, timed from the first call, every result read back; `task["plan"]` is
    shapes.js's `plan()`."""
    plan = task["plan"]
    height = plan["height"]

    def pixels(width):
        count = height * width * 3
        return (np.arange(count) % 251 / 251).astype(np.float32).reshape(1, height, width, 3)

    def per_call(widths):
        model = keras.Sequential([keras.Input((None, None, 3)),
                                  layers.Conv2D(8, 3, activation="relu"),
                                  layers.GlobalAveragePooling2D(), layers.Dense(4)])
        forward = tf.function(lambda x: model(x, training=False),
                              input_signature=[tf.TensorSpec((1, None, None, 3), tf.float32)])
        images = {width: pixels(width) for width in widths}
        seen = set()
        sums = {True: [0.0, 0], False: [0.0, 0]}
        t0 = time.perf_counter()
        for k in range(plan["calls"]):
            width = widths[k % len(widths)]
            t = time.perf_counter()
            forward(images[width]).numpy()
            entry = sums[width in seen]
            entry[0] += time.perf_counter() - t
            entry[1] += 1
            seen.add(width)
        ms = (time.perf_counter() - t0) * 1e3 / plan["calls"]
        first, repeat = (total * 1e3 / count if count else None for total, count in
                         (sums[False], sums[True]))
        return ms, first, repeat

    def rss():
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    fixed_ms = per_call([plan["fixedWidth"]])[0]
    fixed_mean_ms = per_call([plan["meanWidth"]])[0]
    before = rss()
    variable_ms, new_width_ms, seen_width_ms = per_call(plan["widths"])
    return {"fixedMs": fixed_ms, "fixedMeanMs": fixed_mean_ms, "meanWidth": plan["meanWidth"],
            "variableMs": variable_ms, "newWidthMs": new_width_ms, "seenWidthMs": seen_width_ms,
            "rssDeltaMB": (rss() - before) / (1 << 20), "calls": plan["calls"],
            "widths": len(plan["widths"]), "graphsAlive": None}


def task_model(task):
    spec = task["spec"]
    if spec["graphModel"]:
        raise NotImplementedError("n/a: Keras has no tfjs GraphModel")
    t0 = time.perf_counter()
    model = build(spec)
    out = {"model": spec["name"], "buildMs": (time.perf_counter() - t0) * 1e3,
           "params": int(model.count_params())}
    xs = data(spec, spec["inputShapes"], spec["inputInts"])
    if spec["fit"]:
        out["fit"] = time_fit(model, spec, xs, task)
    out["predict"] = time_predict(model, xs, task)
    if not spec["fit"] or "error" not in out["fit"]:
        out["programMs"] = (time.perf_counter() - t0) * 1e3  # as worker.js: build to last predict
        out["processMs"] = process_age_ms()  # and from the process's start
    return out


def main():
    task = json.loads(sys.argv[1])
    result = {"backend": task["backend"], "kind": task["kind"]}
    try:
        if task["kind"] == "info":
            result["info"] = {"keras": keras.__version__, "tfVersion": tf.__version__,
                              "python": sys.version.split()[0]}
        elif task["kind"] == "params":
            result["params"] = {spec["name"]: int(build(spec).count_params())
                                for spec in task["specs"] if not spec["graphModel"]}
        elif task["kind"] == "model":
            result["model"] = task_model(task)
        elif task["kind"] == "graph":
            result["graph"] = task_graph(task)
        elif task["kind"] == "shapes":
            result["shapes"] = task_shapes(task)
        else:
            raise ValueError(f"unknown task {task['kind']} for the Keras worker")
    except Exception as e:
        result["error"] = f"{type(e).__name__}: {e}" if not str(e).startswith("n/a") else str(e)
    with open(sys.argv[2], "w") as fh:
        json.dump(result, fh)


if __name__ == "__main__":
    main()
