module example.com/romannum

go 1.19
