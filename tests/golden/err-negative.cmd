simulate --seq-len -5
