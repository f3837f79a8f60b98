models >/dev/full
