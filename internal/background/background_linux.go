package background

import "golang.org/x/sys/unix"

// lowerPriority raises the calling thread's nice value by by, up to the
// lowest priority (19), and reports whether it could.
func lowerPriority(by int) bool {
	tid := unix.Gettid()
	nice, err := ThreadNice(tid)
	if err != nil {
		return false
	}
	return unix.Setpriority(unix.PRIO_PROCESS, tid, min(nice+by, 19)) == nil
}

// ThreadNice is the nice value of the thread tid (0: the calling thread).
func ThreadNice(tid int) (int, error) {
	// The system call answers 20 - nice (glibc's getpriority undoes it).
	raw, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	return 20 - raw, err
}

func currentThread() Thread {
	tid := unix.Gettid()
	nice, _ := ThreadNice(tid)
	return Thread{ID: tid, Nice: nice}
}
