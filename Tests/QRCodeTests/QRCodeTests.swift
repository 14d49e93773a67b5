import Testing
@testable import QRCode

/// An enrolment URI as the OTP module builds it, a realistic input.
let enrolmentURI =
    "otpauth://totp/ACME%20Co:alice%40example.com?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
    + "&issuer=ACME%20Co&algorithm=SHA1&digits=6&period=30"

/// Encoding through libqrencode: versions, finder patterns and refusals.
@Suite struct QRCodeTests {
    @Test(arguments: QRCode.ErrorCorrection.allCases)
    func encodesAnEnrolmentURI(_ level: QRCode.ErrorCorrection) throws {
        let qr = try QRCode.encode(enrolmentURI, errorCorrection: level)
        #expect((1...40).contains(qr.version))
        #expect(qr.size == 17 + 4 * qr.version)
        #expect(qr.errorCorrection == level)
        #expect(qr.darkModuleCount > 0 && qr.darkModuleCount < qr.size * qr.size)
    }

    @Test func higherLevelsNeedNoSmallerSymbols() throws {
        let versions = try QRCode.ErrorCorrection.allCases.map { try QRCode.encode(enrolmentURI, errorCorrection: $0).version }
        #expect(versions == versions.sorted())
    }

    @Test func shortTextFitsVersionOne() throws {
        let qr = try QRCode.encode("HELLO WORLD")
        #expect(qr.version == 1)
        #expect(qr.size == 21)
    }

    @Test func encodingIsDeterministicAndCaseSensitive() throws {
        let a = try QRCode.encode(enrolmentURI)
        #expect(try QRCode.encode(enrolmentURI) == a)
        #expect(try QRCode.encode(enrolmentURI.lowercased()) != a)
    }

    /// ISO/IEC 18004 §6.3.3: a 7×7 finder pattern (dark ring, light ring, dark 3×3 centre) in
    /// the top-left, top-right and bottom-left corners, each with a light separator on its
    /// inner sides.
    @Test(arguments: ["HELLO", enrolmentURI, String(repeating: "x", count: 1000)])
    func hasTheThreeFinderPatterns(_ text: String) throws {
        let qr = try QRCode.encode(text)
        let n = qr.size
        for (top, left) in [(0, 0), (0, n - 7), (n - 7, 0)] {
            for r in 0..<7 {
                for c in 0..<7 {
                    let ring = r == 0 || r == 6 || c == 0 || c == 6
                    let centre = (2...4).contains(r) && (2...4).contains(c)
                    #expect(qr[top + r, left + c] == (ring || centre), "finder at (\(top), \(left)) module (\(r), \(c))")
                }
            }
        }
        // Separators: the row and column next to each finder pattern are light.
        for i in 0..<8 {
            #expect(!qr[7, i] && !qr[i, 7])  // top left
            #expect(!qr[7, n - 1 - i] && !qr[i, n - 8])  // top right
            #expect(!qr[n - 8, i] && !qr[n - 1 - i, 7])  // bottom left
        }
        // Timing pattern between the top finders: alternating, dark on even columns.
        for c in 8..<(n - 8) { #expect(qr[6, c] == (c % 2 == 0)) }
    }

    @Test func darkRunsCoverEveryDarkModule() throws {
        let qr = try QRCode.encode(enrolmentURI)
        var total = 0
        for row in 0..<qr.size {
            for run in qr.darkRuns(inRow: row) {
                for column in run.column..<(run.column + run.length) { #expect(qr[row, column]) }
                total += run.length
            }
        }
        #expect(total == qr.darkModuleCount)
    }

    // MARK: - Refusals

    @Test func emptyTextIsRefused() {
        let error = #expect(throws: QRCodeError.self) { try QRCode.encode("") }
        #expect(error?.code == .emptyInput)
    }

    @Test func textOverTheBoundIsRefused() throws {
        let error = #expect(throws: QRCodeError.self) {
            try QRCode.encode(String(repeating: "a", count: QRCode.maximumInputByteCount + 1))
        }
        #expect(error?.code == .inputTooLong)
        // The bound counts UTF-8 bytes: 1,025 two-byte characters are 2,050 bytes.
        let multibyte = #expect(throws: QRCodeError.self) { try QRCode.encode(String(repeating: "é", count: 1025)) }
        #expect(multibyte?.code == .inputTooLong)
    }

    @Test func textAtTheBoundFitsAtLowAndMediumButNotHigh() throws {
        let text = String(repeating: "a", count: QRCode.maximumInputByteCount)
        #expect(try QRCode.encode(text, errorCorrection: .low).version <= 40)
        #expect(try QRCode.encode(text, errorCorrection: .medium).version <= 40)
        // Version 40-H holds 1,273 bytes in 8-bit mode.
        let error = #expect(throws: QRCodeError.self) { try QRCode.encode(text, errorCorrection: .high) }
        #expect(error?.code == .capacityExceeded)
    }

    @Test func nulIsRefused() {
        let error = #expect(throws: QRCodeError.self) { try QRCode.encode("otpauth://\u{0}totp") }
        #expect(error?.code == .invalidInput)
    }

    @Test func errorDescriptionsNameOnlyTheCode() {
        let error = #expect(throws: QRCodeError.self) { try QRCode.encode(String(repeating: "s", count: 3000)) }
        #expect(error?.description == "QRCodeError(input_too_long)")
    }
}
