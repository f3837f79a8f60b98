real bench --calibration-out @WORK@/cal.ini --param-dtype fp8
