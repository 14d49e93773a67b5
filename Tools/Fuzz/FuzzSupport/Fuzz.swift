import CFuzzSupport
#if canImport(Glibc)
import Glibc
#endif
// libFuzzer's driver: SwiftPM gives every executable its own `main`, which shadows the one in
// libFuzzer's archive, so each target's `main` hands its callback to `LLVMFuzzerRunDriver`.
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// Helpers shared by the libFuzzer targets under Tools/Fuzz.
public enum Fuzz {
    /// How much heap one input may use at its peak: `perInputByte` bytes for each byte of input,
    /// plus `constant` (one-time initialisation: type metadata, lazily built tables, OpenSSL's
    /// contexts). A parser that believes a length field instead of its input allocates far past
    /// this, which is a finding; libFuzzer's `-malloc_limit_mb` catches only single huge
    /// allocations, this catches the many small ones too.
    public struct AllocationBound: Sendable {
        public let perInputByte: Int
        public let constant: Int

        public init(perInputByte: Int, constant: Int = 1 << 20) {
            self.perInputByte = perInputByte
            self.constant = constant
        }

        public func limit(forInputOf size: Int) -> Int { constant + perInputByte * size }

        /// The default for Signet's parsers: 64 bytes of heap per input byte, plus 1 MiB.
        public static let standard = AllocationBound(perInputByte: 64)
    }

    // Set once by `run` before libFuzzer starts, read by `measured` only (single-threaded).
    nonisolated(unsafe) private static var target: (@convention(c) (UnsafePointer<UInt8>?, Int) -> CInt)?
    nonisolated(unsafe) private static var bound = AllocationBound.standard

    /// Runs libFuzzer with the process's arguments and `body` as the target; every input's peak
    /// heap use must stay within `allocationBound` (see ``AllocationBound``).
    public static func run(
        _ body: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt, allocationBound: AllocationBound = .standard
    ) -> Never {
        target = body
        bound = allocationBound
        // SIGNET_FUZZ_ALLOCATION_BOUND=<per byte>:<constant> overrides it, to try a tighter
        // bound or to see the check fail (`0:0`).
        if let text = getenv("SIGNET_FUZZ_ALLOCATION_BOUND").map({ String(cString: $0) }) {
            let parts = text.split(separator: ":").compactMap { Int($0) }
            if parts.count == 2 { bound = AllocationBound(perInputByte: parts[0], constant: parts[1]) }
        }
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        let status = LLVMFuzzerRunDriver(&argc, &argv, measured)
        exit(status)
    }

    /// The target, with its heap use measured (AddressSanitizer's malloc and free hooks).
    private static let measured: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt = { data, size in
        signet_fuzz_allocation_begin()
        let status = target?(data, size) ?? 0
        let peak = signet_fuzz_allocation_peak()
        let limit = bound.limit(forInputOf: size)
        if peak > limit {
            fail("a \(size)-byte input used \(peak) bytes of heap at its peak (bound \(limit))")
        }
        return status
    }

    /// Fails the run: a broken property is a finding, the same as a crash.
    public static func fail(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
        fatalError("property violated: \(message)", file: file, line: line)
    }

    /// Copies libFuzzer's input into an array.
    public static func bytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
        guard let data, size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: size))
    }
}
