simulate --topology dgx-z100
