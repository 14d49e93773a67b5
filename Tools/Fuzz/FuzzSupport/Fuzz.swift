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
    /// Runs libFuzzer with the process's arguments and `body` as the target.
    public static func run(_ body: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> Never {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        let status = LLVMFuzzerRunDriver(&argc, &argv, body)
        exit(status)
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
