module example.com/outer/nested

go 1.26
