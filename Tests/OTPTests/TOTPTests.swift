import Foundation
import Testing
@testable import OTP

/// One row of RFC 6238 Appendix B: time, time step T (hex in the RFC), algorithm and the
/// 8-digit TOTP.
struct RFC6238Vector: Sendable, CustomTestStringConvertible {
    let time: Int64
    let step: UInt64
    let algorithm: OTPAlgorithm
    let code: String

    var testDescription: String { "\(time) \(algorithm)" }

    /// The seeds of the RFC's reference implementation: ASCII "1234567890" repeated to 20,
    /// 32 and 64 bytes.
    var secret: OTPSecret {
        get throws {
            try OTPSecret(bytes: seed("1234567890", count: algorithm.recommendedSecretByteCount))
        }
    }

    static let all: [RFC6238Vector] = [
        .init(time: 59, step: 0x1, algorithm: .sha1, code: "94287082"),
        .init(time: 59, step: 0x1, algorithm: .sha256, code: "46119246"),
        .init(time: 59, step: 0x1, algorithm: .sha512, code: "90693936"),
        .init(time: 1_111_111_109, step: 0x23523EC, algorithm: .sha1, code: "07081804"),
        .init(time: 1_111_111_109, step: 0x23523EC, algorithm: .sha256, code: "68084774"),
        .init(time: 1_111_111_109, step: 0x23523EC, algorithm: .sha512, code: "25091201"),
        .init(time: 1_111_111_111, step: 0x23523ED, algorithm: .sha1, code: "14050471"),
        .init(time: 1_111_111_111, step: 0x23523ED, algorithm: .sha256, code: "67062674"),
        .init(time: 1_111_111_111, step: 0x23523ED, algorithm: .sha512, code: "99943326"),
        .init(time: 1_234_567_890, step: 0x273EF07, algorithm: .sha1, code: "89005924"),
        .init(time: 1_234_567_890, step: 0x273EF07, algorithm: .sha256, code: "91819424"),
        .init(time: 1_234_567_890, step: 0x273EF07, algorithm: .sha512, code: "93441116"),
        .init(time: 2_000_000_000, step: 0x3F940AA, algorithm: .sha1, code: "69279037"),
        .init(time: 2_000_000_000, step: 0x3F940AA, algorithm: .sha256, code: "90698825"),
        .init(time: 2_000_000_000, step: 0x3F940AA, algorithm: .sha512, code: "38618901"),
        .init(time: 20_000_000_000, step: 0x27BC86AA, algorithm: .sha1, code: "65353130"),
        .init(time: 20_000_000_000, step: 0x27BC86AA, algorithm: .sha256, code: "77737706"),
        .init(time: 20_000_000_000, step: 0x27BC86AA, algorithm: .sha512, code: "47863826"),
    ]
}

/// RFC 6238 TOTP: Appendix B, the drift window, replay and time range.
@Suite struct TOTPTests {
    /// The RFC 6238 SHA-1 seed.
    static let secret = try! OTPSecret(bytes: Array("12345678901234567890".utf8))
    /// RFC 6238's 1111111111, inside step 0x23523ED.
    static let now: Int64 = 1_111_111_111

    @Test(arguments: RFC6238Vector.all)
    func rfc6238AppendixB(_ vector: RFC6238Vector) throws {
        let totp = try TOTP(secret: vector.secret, algorithm: vector.algorithm, digits: 8)
        #expect(try totp.timeStep(unixTime: vector.time) == vector.step)
        #expect(try totp.code(unixTime: vector.time) == vector.code)
        #expect(try totp.code(at: Date(timeIntervalSince1970: TimeInterval(vector.time))) == vector.code)
        #expect(try totp.verify(vector.code, unixTime: vector.time, window: 0) == vector.step)
    }

    @Test func rfcSeedsHaveTheRFCLengths() {
        #expect(seed("1234567890", count: 32) == Array("12345678901234567890123456789012".utf8))
        #expect(seed("1234567890", count: 64) == Array("1234567890123456789012345678901234567890123456789012345678901234".utf8))
    }

    @Test func defaultsAreSHA1SixDigitsThirtySeconds() throws {
        let totp = try TOTP(secret: Self.secret)
        #expect(totp.algorithm == .sha1)
        #expect(totp.digits == 6)
        #expect(totp.period == 30)
        // The last six digits of the RFC's 8-digit SHA-1 code at 59 s.
        #expect(try totp.code(unixTime: 59) == "287082")
        #expect(try totp.timeStep(unixTime: 0) == 0)
        #expect(try totp.timeStep(unixTime: 29) == 0)
        #expect(try totp.timeStep(unixTime: 30) == 1)
        #expect(try totp.timeStep(at: Date(timeIntervalSince1970: 59.999)) == 1)
    }

    // MARK: - Drift window

    @Test(arguments: [-1, 0, 1])
    func driftWithinOneStepIsAcceptedAndReported(_ offset: Int) throws {
        let totp = try TOTP(secret: Self.secret)
        let current = try totp.timeStep(unixTime: Self.now)
        let step = UInt64(Int64(current) + Int64(offset))
        let code = totp.code(timeStep: step)
        #expect(try totp.verify(code, unixTime: Self.now) == step)
        #expect(try totp.verify(code, at: Date(timeIntervalSince1970: TimeInterval(Self.now))) == step)
    }

    @Test(arguments: [-2, 2, -3, 3])
    func driftBeyondTheWindowIsRefused(_ offset: Int) throws {
        let totp = try TOTP(secret: Self.secret)
        let current = try totp.timeStep(unixTime: Self.now)
        let step = UInt64(Int64(current) + Int64(offset))
        let code = totp.code(timeStep: step)
        // The test only means something if this code is not also the code of a step in the
        // window; for this secret and time it is not.
        for near in (current - 1)...(current + 1) { try #require(totp.code(timeStep: near) != code) }
        let error = #expect(throws: OTPError.self) { try totp.verify(code, unixTime: Self.now) }
        #expect(error?.code == .codeMismatch)
        // A wider window accepts it and reports the step.
        #expect(try totp.verify(code, unixTime: Self.now, window: abs(offset)) == step)
    }

    @Test func windowZeroAcceptsOnlyTheCurrentStep() throws {
        let totp = try TOTP(secret: Self.secret)
        let current = try totp.timeStep(unixTime: Self.now)
        #expect(try totp.verify(totp.code(timeStep: current), unixTime: Self.now, window: 0) == current)
        let error = #expect(throws: OTPError.self) {
            try totp.verify(totp.code(timeStep: current - 1), unixTime: Self.now, window: 0)
        }
        #expect(error?.code == .codeMismatch)
    }

    @Test func wrongCodeIsRefused() throws {
        let totp = try TOTP(secret: Self.secret)
        let right = try totp.code(unixTime: Self.now)
        // Change the last digit; make sure it is not the code of a neighbouring step.
        let last = right.utf8.last! - UInt8(ascii: "0")
        let wrong = String(right.dropLast()) + String((last + 1) % 10)
        let current = try totp.timeStep(unixTime: Self.now)
        for near in (current - 1)...(current + 1) { try #require(totp.code(timeStep: near) != wrong) }
        let error = #expect(throws: OTPError.self) { try totp.verify(wrong, unixTime: Self.now) }
        #expect(error?.code == .codeMismatch)
    }

    @Test(arguments: ["05047", "0504711", "14050471", "05047a", "050 471", "-50471"])
    func wrongLengthOrCharactersAreRefused(_ code: String) throws {
        let totp = try TOTP(secret: Self.secret)
        let error = #expect(throws: OTPError.self) { try totp.verify(code, unixTime: Self.now) }
        #expect(error?.code == .malformedCode)
    }

    // MARK: - Replay

    @Test func theMatchedStepCannotBeReplayed() throws {
        let totp = try TOTP(secret: Self.secret)
        let code = try totp.code(unixTime: Self.now)
        let step = try totp.verify(code, unixTime: Self.now)
        let replay = #expect(throws: OTPError.self) { try totp.verify(code, unixTime: Self.now, after: step) }
        #expect(replay?.code == .replayedCode)
        // Nor can the code of an earlier step inside the window once a later one was used.
        let earlier = totp.code(timeStep: step - 1)
        let old = #expect(throws: OTPError.self) { try totp.verify(earlier, unixTime: Self.now, after: step) }
        #expect(old?.code == .replayedCode)
        // The next step's code is still fresh.
        #expect(try totp.verify(totp.code(timeStep: step + 1), unixTime: Self.now, after: step) == step + 1)
        // A last used step before the window changes nothing.
        #expect(try totp.verify(code, unixTime: Self.now, after: step - 5) == step)
    }

    // MARK: - Parameters and time range

    @Test(arguments: [-1, TOTP.maximumWindow + 1])
    func windowOutOfRangeIsRefused(_ window: Int) throws {
        let totp = try TOTP(secret: Self.secret)
        let error = #expect(throws: OTPError.self) { try totp.verify("050471", unixTime: Self.now, window: window) }
        #expect(error?.code == .invalidParameter)
    }

    @Test(arguments: [0, -30, 3601])
    func periodOutOfRangeIsRefused(_ period: Int) {
        let error = #expect(throws: OTPError.self) { try TOTP(secret: Self.secret, period: period) }
        #expect(error?.code == .invalidParameter)
    }

    @Test func timesBeforeT0AreRefused() throws {
        let totp = try TOTP(secret: Self.secret)
        let error = #expect(throws: OTPError.self) { try totp.code(unixTime: -1) }
        #expect(error?.code == .timeOutOfRange)
        let before = #expect(throws: OTPError.self) { try totp.code(at: Date(timeIntervalSince1970: -0.5)) }
        #expect(before?.code == .timeOutOfRange)
        let far = #expect(throws: OTPError.self) { try totp.code(at: Date(timeIntervalSince1970: 1e30)) }
        #expect(far?.code == .timeOutOfRange)
        // At T0 the window simply has no step before 0.
        #expect(try totp.verify(totp.code(timeStep: 0), unixTime: 0) == 0)
        #expect(try totp.verify(totp.code(timeStep: 1), unixTime: 0) == 1)
    }

    @Test func otherPeriodsDivideTimeAccordingly() throws {
        let totp = try TOTP(secret: Self.secret, digits: 8, period: 60)
        #expect(try totp.timeStep(unixTime: 59) == 0)
        #expect(try totp.timeStep(unixTime: 120) == 2)
        // RFC 4226's counter-1 value is the 60 s code from 60 to 119 s.
        #expect(try totp.code(unixTime: 60) == "94287082")
    }
}
