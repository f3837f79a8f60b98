report --timeline /nonexistent.dat
