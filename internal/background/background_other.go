//go:build !linux

package background

func lowerPriority(int) bool { return false }

func currentThread() Thread { return Thread{} }
