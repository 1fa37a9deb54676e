package vendortest

// NewThreatFox serves csv as ThreatFox's export/csv/recent download (see
// AbuseCh for the Auth-Key check and the failures it gives on demand).
func NewThreatFox(csv []byte) *AbuseCh { return &AbuseCh{Path: ThreatFoxPath, Body: csv} }
