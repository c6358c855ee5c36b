module github.com/seed84792017/cellcast

go 1.26

require github.com/golang/snappy v1.0.0
