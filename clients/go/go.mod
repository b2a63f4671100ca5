module github.com/rlock/rlock/clients/go

go 1.19
