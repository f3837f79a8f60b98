models --show tiny-llama --kernels --torch-version 2.x
