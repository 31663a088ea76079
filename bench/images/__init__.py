"""Image data sets made here (procedural JPEGs) for input-pipeline runs and int8 calibration; framework-free."""
