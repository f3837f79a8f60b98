simulate --transformer-layer-cls GPT2Block --timeline partial.dat
