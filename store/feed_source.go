package store

// SourceKey is the key of the feed's source among the kinds and categories
// tifeeds fetches: the category of a custom feed, the kind of the others.
func (f *Feed) SourceKey() string {
	if f.Type == FeedCustom {
		return f.Category
	}
	return f.Kind
}
