simulate --cpu-offload --grad-accum 4
