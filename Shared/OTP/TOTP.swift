import Crypto
import FoundationEssentials

/// Time-based one-time passwords (RFC 6238): HOTP whose counter is the number of whole
/// periods since T0.
///
/// T0 is the Unix epoch (RFC 6238 §4.1 default, and the only value the Key Uri Format can
/// express); the period is 30 s unless asked otherwise. Verification accepts codes from a drift
/// window of steps around the current one (RFC 6238 §5.2 recommends at most one step back)
/// and returns the step that matched, so that the caller can store it and refuse that step,
/// and every earlier one, the next time (§5.2: "the verifier MUST NOT accept the second
/// attempt of the OTP after the successful validation has been issued for the first OTP").
///
/// ```swift
/// let totp = try TOTP(secret: credential.secret)
/// let step = try totp.verify(presented, at: .now, after: credential.lastUsedStep)
/// credential.lastUsedStep = step
/// ```
public struct TOTP: Sendable, Hashable {
    /// The HOTP generator that computes the code for a time step.
    public let hotp: HOTP
    /// The length of a time step in seconds (RFC 6238's X).
    public let period: Int

    /// The default period: 30 s (RFC 6238 §5.2).
    public static let defaultPeriod = 30

    /// The accepted periods in seconds.
    public static let periodRange: ClosedRange<Int> = 1...3600

    /// The largest drift window accepted, in steps either side. RFC 6238 §5.2 recommends one
    /// step; every extra step is two more chances for a guess.
    public static let maximumWindow = 10

    /// A TOTP generator and verifier.
    ///
    /// - Parameters:
    ///   - secret: The shared secret.
    ///   - algorithm: The HMAC hash function; authenticator apps expect ``OTPAlgorithm/sha1``.
    ///   - digits: The code length, within ``HOTP/digitRange``.
    ///   - period: The step length in seconds, within ``periodRange``.
    /// - Throws: ``OTPError`` with code ``OTPError/Code-swift.struct/invalidParameter`` for
    ///   `digits` or `period` out of range.
    public init(secret: OTPSecret, algorithm: OTPAlgorithm = .sha1, digits: Int = 6, period: Int = defaultPeriod) throws {
        guard Self.periodRange.contains(period) else {
            throw OTPError(.invalidParameter, "period \(period) outside \(Self.periodRange.lowerBound)...\(Self.periodRange.upperBound)")
        }
        self.hotp = try HOTP(secret: secret, algorithm: algorithm, digits: digits)
        self.period = period
    }

    /// The shared secret.
    public var secret: OTPSecret { hotp.secret }
    /// The HMAC hash function.
    public var algorithm: OTPAlgorithm { hotp.algorithm }
    /// The number of digits of a code.
    public var digits: Int { hotp.digits }

    // MARK: - Time steps

    /// The time step that contains `unixTime`: `floor((unixTime - T0) / period)` with T0 = 0
    /// (RFC 6238 §4.2).
    ///
    /// - Parameter unixTime: Seconds since the Unix epoch.
    /// - Throws: ``OTPError`` with code ``OTPError/Code-swift.struct/timeOutOfRange`` for a
    ///   time before T0.
    public func timeStep(unixTime: Int64) throws -> UInt64 {
        guard unixTime >= 0 else { throw OTPError(.timeOutOfRange, "time before T0") }
        return UInt64(unixTime) / UInt64(period)
    }

    /// The time step that contains `date`.
    ///
    /// - Parameter date: Any instant; fractions of a second are dropped.
    /// - Throws: ``OTPError`` with code ``OTPError/Code-swift.struct/timeOutOfRange`` for an
    ///   instant before T0 or beyond what 64-bit seconds hold.
    public func timeStep(at date: Date) throws -> UInt64 {
        try timeStep(unixTime: Self.unixTime(of: date))
    }

    /// Whole seconds since the Unix epoch, rounded down.
    static func unixTime(of date: Date) throws -> Int64 {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        // 2^63 is exactly representable as a Double; anything at or above it, or not finite,
        // does not fit in Int64.
        guard seconds.isFinite, seconds >= -9_223_372_036_854_775_808.0, seconds < 9_223_372_036_854_775_808.0 else {
            throw OTPError(.timeOutOfRange, "time not representable in 64-bit seconds")
        }
        return Int64(seconds)
    }

    // MARK: - Generating

    /// The code for a time step.
    ///
    /// - Parameter timeStep: The counter, e.g. from ``timeStep(at:)``.
    /// - Returns: A string of exactly ``digits`` ASCII digits.
    public func code(timeStep: UInt64) -> String {
        hotp.code(counter: timeStep)
    }

    /// The code valid at `unixTime`.
    ///
    /// - Parameter unixTime: Seconds since the Unix epoch.
    /// - Throws: ``OTPError`` with code ``OTPError/Code-swift.struct/timeOutOfRange`` for a
    ///   time before T0.
    public func code(unixTime: Int64) throws -> String {
        try code(timeStep: timeStep(unixTime: unixTime))
    }

    /// The code valid at `date`.
    ///
    /// - Parameter date: Any instant at or after the Unix epoch.
    /// - Throws: ``OTPError`` with code ``OTPError/Code-swift.struct/timeOutOfRange`` for an
    ///   instant before T0.
    public func code(at date: Date) throws -> String {
        try code(timeStep: timeStep(at: date))
    }

    // MARK: - Verifying

    /// Checks a presented code against the steps from `window` before to `window` after the
    /// step that contains `date`, and returns the step that matched.
    ///
    /// - Parameters:
    ///   - code: The code as the user typed it: exactly ``digits`` ASCII digits, no spaces.
    ///   - date: The server's current time.
    ///   - window: Steps of clock drift accepted either side, 0…``maximumWindow``; the default
    ///     one step follows RFC 6238 §5.2.
    ///   - lastUsedStep: The step of the last code accepted for this credential, if any;
    ///     this step and all earlier ones are refused, so a code cannot be replayed.
    /// - Returns: The matched time step: store it as the credential's new `lastUsedStep`.
    /// - Throws: ``OTPError`` with code ``OTPError/Code-swift.struct/malformedCode`` for a code
    ///   that is not ``digits`` ASCII digits, ``OTPError/Code-swift.struct/replayedCode`` when
    ///   the code matches only steps at or before `lastUsedStep`,
    ///   ``OTPError/Code-swift.struct/codeMismatch`` when it matches no step in the window,
    ///   ``OTPError/Code-swift.struct/invalidParameter`` for a `window` out of range, and
    ///   ``OTPError/Code-swift.struct/timeOutOfRange`` for a `date` before T0.
    public func verify(_ code: String, at date: Date = Date(), window: Int = 1, after lastUsedStep: UInt64? = nil) throws -> UInt64 {
        try verify(code, unixTime: Self.unixTime(of: date), window: window, after: lastUsedStep)
    }

    /// Checks a presented code at a time given in Unix seconds; see ``verify(_:at:window:after:)``.
    ///
    /// Every step in the window is computed and compared in constant time, whether or not
    /// another one already matched, so the running time does not tell which step did. When
    /// several steps match (two steps with the same code, about one chance in a million per
    /// pair), the one closest to the current step wins, earlier before later.
    ///
    /// - Parameters:
    ///   - code: The presented code.
    ///   - unixTime: The server's current time in seconds since the Unix epoch.
    ///   - window: Steps of drift accepted either side, 0…``maximumWindow``.
    ///   - lastUsedStep: The step of the last accepted code, if any.
    /// - Returns: The matched time step.
    /// - Throws: ``OTPError`` as for ``verify(_:at:window:after:)``.
    public func verify(_ code: String, unixTime: Int64, window: Int = 1, after lastUsedStep: UInt64? = nil) throws -> UInt64 {
        guard (0...Self.maximumWindow).contains(window) else {
            throw OTPError(.invalidParameter, "window \(window) outside 0...\(Self.maximumWindow)")
        }
        try hotp.checkFormat(code)
        let current = try timeStep(unixTime: unixTime)

        var accepted: UInt64?
        var replayed = false
        // Offsets in order of preference: 0, -1, +1, -2, +2, …
        for distance in 0...window {
            for offset in distance == 0 ? [0] : [-distance, distance] {
                guard let step = Self.step(current, offsetBy: offset) else { continue }
                let equal = ConstantTime.equals(self.code(timeStep: step), code)
                let fresh = lastUsedStep.map { step > $0 } ?? true
                if equal, fresh, accepted == nil { accepted = step }
                if equal, !fresh { replayed = true }
            }
        }
        if let accepted { return accepted }
        if replayed { throw OTPError(.replayedCode, "code matches only steps at or before the last used step") }
        throw OTPError(.codeMismatch, "no time step in the window matched")
    }

    /// `step + offset`, or `nil` when that falls before step 0 or past the last step.
    private static func step(_ step: UInt64, offsetBy offset: Int) -> UInt64? {
        if offset < 0 {
            let back = UInt64(-offset)
            return step >= back ? step - back : nil
        }
        let (sum, overflow) = step.addingReportingOverflow(UInt64(offset))
        return overflow ? nil : sum
    }
}
