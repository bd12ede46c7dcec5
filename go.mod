module github.com/corral-go/corral

go 1.26.0

require go.uber.org/goleak v1.3.0

require github.com/stretchr/testify v1.12.1 // indirect
