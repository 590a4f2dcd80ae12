#!/bin/sh
# Makes the virtualenv of the Python Keras 3 peer column (benches/keras/worker.py): TensorFlow
# 2.21 (tensorflow-cpu, the libtensorflow this package runs on) and the Keras 3 it depends on,
# from PyPI. The wheel is taken from ~/.cache/tfjs-node-rs when the package's install left it
# there. run.js finds the venv at $TFJS_NODE_RS_KERAS_VENV (default
# ~/.cache/tfjs-node-rs/keras-venv) and skips the column with a note when it is absent.
#   sh benches/keras/setup.sh
set -eu
venv=${TFJS_NODE_RS_KERAS_VENV:-$HOME/.cache/tfjs-node-rs/keras-venv}
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --find-links "$HOME/.cache/tfjs-node-rs" tensorflow-cpu==2.21.0
"$venv/bin/python" -c 'import tensorflow as tf, keras; print("keras", keras.__version__, "on TensorFlow", tf.__version__)'
