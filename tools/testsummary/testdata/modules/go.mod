module example.com/outer

go 1.26
