simulate --param-dtype int8
