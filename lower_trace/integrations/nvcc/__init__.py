"""The device stage for CUDA: NVIDIA's tools (nvcc, ptxas, nvdisasm), found and run."""
