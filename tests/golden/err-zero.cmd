simulate --micro-batch 0
