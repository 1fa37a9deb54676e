package server

// HoldLoginHashing takes every bcrypt slot, as that many slow logins would,
// until release is called.
func (s *Server) HoldLoginHashing() (release func()) {
	n := cap(s.logins.hashing)
	for range n {
		s.logins.hashing <- struct{}{}
	}
	return func() {
		for range n {
			<-s.logins.hashing
		}
	}
}
