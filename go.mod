module github.com/seed84792017/cellcast

go 1.26

require (
	github.com/bits-and-blooms/bitset v1.24.2 // indirect
	github.com/bits-and-blooms/bloom/v3 v3.7.1 // indirect
	github.com/golang/snappy v1.0.0 // indirect
)
