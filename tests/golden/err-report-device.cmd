report --memory /dev/zero --out partial
