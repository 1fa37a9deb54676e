package store

// DenseKind lets tests take pageByType's id-order path with few IoCs.
var DenseKind = &denseKind
