#if canImport(Glibc)
import Glibc
#endif

/// Names the calling OS thread, as `top -H`, `ps -L`, `perf` and debuggers show it (Linux keeps
/// 15 bytes). Foundation's `Thread.name` does not reach the OS thread here.
public func nameCurrentThread(_ name: String) {
    #if canImport(Glibc)
    // pthread_setname_np is not visible to Swift through Glibc; /proc/thread-self/comm is the
    // same setting.
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    defer { close(fd) }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    #endif
}
