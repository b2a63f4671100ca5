module github.com/rlock/rlock/jepsen

go 1.26.0

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/redis/go-redis/v9 v9.23.0
	github.com/rlock/rlock/clients/go v0.0.0
	golang.org/x/sys v0.48.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
)

replace github.com/rlock/rlock/clients/go => ../clients/go
