simulate --set gpu.memory=nanGiB
