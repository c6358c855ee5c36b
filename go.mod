module github.com/seed84792017/cellcast

go 1.26
