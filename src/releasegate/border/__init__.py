"""The border: every byte from outside (an HTTP reply, a file or directory, a stored run file read back, a
command-line value, an environment variable) is read here, with byte, time, depth and type limits, and nowhere
else (tests/test_border.py checks the source for reads around it)."""
