schedule --model toy --topology test-2x4 --auto-wrap-policy none --min-num-params 1e6
