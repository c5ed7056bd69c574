// Which lock guards what, said in the declarations so that clang checks it: clang's thread
// safety analysis (-Wthread-safety; the thread_safety test builds with it) warns where a guarded
// field is touched without its lock held, or a function is called without the lock it needs.
// Under other compilers the macros are empty. The lock type itself is common/mutex.h.
//
//   class Queue {
//     Mutex mu_;
//     std::deque<int> items_ GUARDED_BY(mu_);  // read or written only with mu_ held
//     void DropOldest() REQUIRES(mu_);         // called with mu_ held
//   };
#pragma once

#if defined(__clang__)
#define FM_THREAD_ATTRIBUTE(x) __attribute__((x))
#else
#define FM_THREAD_ATTRIBUTE(x)
#endif

// On a type: its objects are locks ("mutex" names the kind in the warnings).
#define CAPABILITY(kind) FM_THREAD_ATTRIBUTE(capability(kind))
// On a type: its objects hold a lock from construction to destruction.
#define SCOPED_CAPABILITY FM_THREAD_ATTRIBUTE(scoped_lockable)

// On a field: read or written only with `mu` held.
#define GUARDED_BY(mu) FM_THREAD_ATTRIBUTE(guarded_by(mu))
// On a pointer: what it points to is read or written only with `mu` held.
#define PT_GUARDED_BY(mu) FM_THREAD_ATTRIBUTE(pt_guarded_by(mu))

// On a function: called with these locks held, and returns with them still held.
#define REQUIRES(...) FM_THREAD_ATTRIBUTE(requires_capability(__VA_ARGS__))
// On a function: called with these locks not held (it takes them itself).
#define EXCLUDES(...) FM_THREAD_ATTRIBUTE(locks_excluded(__VA_ARGS__))
// On a function: returns holding these locks (none named: the object it is called on).
#define ACQUIRE(...) FM_THREAD_ATTRIBUTE(acquire_capability(__VA_ARGS__))
// On a function: returns having let these go (none named: the object it is called on).
#define RELEASE(...) FM_THREAD_ATTRIBUTE(release_capability(__VA_ARGS__))

// On a function the analysis cannot follow; say beside it why it is right.
#define NO_THREAD_SAFETY_ANALYSIS FM_THREAD_ATTRIBUTE(no_thread_safety_analysis)
