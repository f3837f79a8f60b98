simulate --min-num-params 1e8
