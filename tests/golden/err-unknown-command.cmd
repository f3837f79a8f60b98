simulat
