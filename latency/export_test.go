package latency

// BucketOf is bucket: the index of the bucket that holds d.
var BucketOf = bucket
