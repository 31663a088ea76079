"""OpenVINO: the adapter (inference on an exported ONNX graph)."""
