topology rail-h100-1024
