package latency

import "github.com/corral-go/corral/internal/bucket"

// BucketOf is bucket: the index of the bucket that holds d.
var BucketOf = bucket.Of
