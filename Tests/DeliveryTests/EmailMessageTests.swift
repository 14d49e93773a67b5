import Foundation
import Testing

@testable import Delivery

@Suite struct EmailMessageTests {
    static let date = Date(timeIntervalSince1970: 1_751_371_200)  // Tue, 01 Jul 2025 12:00:00 UTC
    static let messageID = "<fixed-id@signet.example>"

    static func sender() throws -> EmailAddress { try EmailAddress("no-reply@signet.example", displayName: "Signet") }
    static func alice() throws -> EmailAddress { try EmailAddress("alice@example.com") }

    // MARK: - Golden renderings

    @Test func rendersPlainTextGolden() throws {
        let message = try EmailMessage(
            from: Self.sender(), to: Self.alice(), subject: "Your Signet verification code",
            textBody: "Your code is 123456.\nIt expires in 5 minutes.\n")
        let expected = """
            Date: Tue, 01 Jul 2025 12:00:00 +0000\r
            From: Signet <no-reply@signet.example>\r
            To: alice@example.com\r
            Subject: Your Signet verification code\r
            Message-ID: <fixed-id@signet.example>\r
            MIME-Version: 1.0\r
            Content-Type: text/plain; charset=utf-8\r
            Content-Transfer-Encoding: quoted-printable\r
            \r
            Your code is 123456.\r
            It expires in 5 minutes.\r

            """
        #expect(try message.render(date: Self.date, messageID: Self.messageID) == expected)
    }

    @Test func rendersMultipartAlternativeGolden() throws {
        let message = try EmailMessage(
            from: Self.sender(), to: [Self.alice(), EmailAddress("bob@example.org", displayName: "Zoë Müller")],
            subject: "Votre code de vérification", textBody: "Code: 123456", htmlBody: "<p>Code: <b>123456</b></p>")
        let expected = """
            Date: Tue, 01 Jul 2025 12:00:00 +0000\r
            From: Signet <no-reply@signet.example>\r
            To: alice@example.com, =?utf-8?B?Wm/DqyBNw7xsbGVy?= <bob@example.org>\r
            Subject: =?utf-8?B?Vm90cmUgY29kZSBkZSB2w6lyaWZpY2F0aW9u?=\r
            Message-ID: <fixed-id@signet.example>\r
            MIME-Version: 1.0\r
            Content-Type: multipart/alternative; boundary="=_signet_ed2c5f28fbc63e8d"\r
            \r
            --=_signet_ed2c5f28fbc63e8d\r
            Content-Type: text/plain; charset=utf-8\r
            Content-Transfer-Encoding: quoted-printable\r
            \r
            Code: 123456\r
            --=_signet_ed2c5f28fbc63e8d\r
            Content-Type: text/html; charset=utf-8\r
            Content-Transfer-Encoding: quoted-printable\r
            \r
            <p>Code: <b>123456</b></p>\r
            --=_signet_ed2c5f28fbc63e8d--\r

            """
        #expect(try message.render(date: Self.date, messageID: Self.messageID) == expected)
    }

    @Test func defaultMessageIDUsesTheSenderDomain() throws {
        let message = try EmailMessage(from: Self.sender(), to: Self.alice(), subject: "s", textBody: "b")
        let rendered = try message.render(date: Self.date)
        let id = try #require(MIMEDecoding.header("Message-ID", in: rendered))
        #expect(id.hasPrefix("<") && id.hasSuffix("@signet.example>"))
        #expect(MIMEDecoding.header("Date", in: rendered) == "Tue, 01 Jul 2025 12:00:00 +0000")
    }

    // MARK: - Header injection

    static let injections = ["Hello\r\nBcc: evil@example.net", "Hello\nBcc: evil@example.net", "Hello\rX: y", "nul\0byte"]

    @Test(arguments: injections)
    func refusesLineBreaksInTheSubject(subject: String) throws {
        let error = try #require(throws: DeliveryError.self) {
            try EmailMessage(from: Self.sender(), to: Self.alice(), subject: subject, textBody: "b")
        }
        #expect(error.code == .headerInjection)
    }

    @Test(arguments: ["alice@example.com\r\nBcc: evil@example.net", "alice@example.com\n", "\ralice@example.com"])
    func refusesLineBreaksInAddresses(address: String) throws {
        let error = try #require(throws: DeliveryError.self) { try EmailAddress(address) }
        #expect(error.code == .headerInjection)
    }

    @Test func refusesLineBreaksInDisplayNames() throws {
        let error = try #require(throws: DeliveryError.self) {
            try EmailAddress("alice@example.com", displayName: "Alice\r\nBcc: evil@example.net")
        }
        #expect(error.code == .headerInjection)
    }

    @Test func refusesLineBreaksInTheMessageID() throws {
        let message = try EmailMessage(from: Self.sender(), to: Self.alice(), subject: "s", textBody: "b")
        let error = try #require(throws: DeliveryError.self) {
            try message.render(date: Self.date, messageID: "<a@b>\r\nBcc: evil@example.net")
        }
        #expect(error.code == .headerInjection)
        let malformed = try #require(throws: DeliveryError.self) { try message.render(messageID: "no-brackets@b") }
        #expect(malformed.code == .invalidMessage)
    }

    @Test(arguments: [
        "", "plain", "a@b", "@example.com", "alice@", "a@@example.com", "alice smith@example.com", "<alice@example.com>",
        "alice@exa_mple.com", "alice@-example.com", ".alice@example.com", "al..ice@example.com", "zoë@example.com",
        "alice@example.com,bob@example.com", String(repeating: "a", count: 65) + "@example.com",
    ])
    func refusesInvalidAddresses(address: String) throws {
        let error = try #require(throws: DeliveryError.self) { try EmailAddress(address) }
        #expect(error.code == .invalidAddress)
    }

    @Test func refusesAMessageWithoutRecipients() throws {
        let error = try #require(throws: DeliveryError.self) {
            try EmailMessage(from: Self.sender(), to: [EmailAddress](), subject: "s", textBody: "b")
        }
        #expect(error.code == .invalidMessage)
    }

    // MARK: - Encoded-words and quoting

    @Test func encodesLongNonASCIISubjectsAsFoldedWords() throws {
        let subject = String(repeating: "Vérifiez votre code à usage unique — ", count: 4) + "日本語のテキスト"
        let folded = HeaderText.unstructured(subject, fieldName: "Subject")
        let lines = ("Subject: " + folded).components(separatedBy: "\r\n")
        #expect(lines.count > 1)
        for line in lines { #expect(line.utf8.count <= 76) }
        for word in folded.components(separatedBy: "\r\n ") {
            #expect(word.hasPrefix("=?utf-8?B?") && word.hasSuffix("?=") && word.utf8.count <= 75)
        }
        #expect(MIMEDecoding.headerValue(folded) == subject)
    }

    @Test func encodesASCIIThatLooksLikeAnEncodedWord() {
        #expect(HeaderText.unstructured("=?utf-8?B?SGk=?=", fieldName: "Subject").hasPrefix("=?utf-8?B?PT91"))
    }

    @Test func foldsLongASCIISubjectsAtSpaces() {
        let subject = Array(repeating: "verification", count: 12).joined(separator: " ")
        let folded = HeaderText.unstructured(subject, fieldName: "Subject")
        for line in ("Subject: " + folded).components(separatedBy: "\r\n") { #expect(line.utf8.count <= 76) }
        #expect(folded.replacingOccurrences(of: "\r\n ", with: " ") == subject)
    }

    @Test(arguments: [
        ("Signet", "Signet <s@signet.example>"),
        ("Doe, Jane", "\"Doe, Jane\" <s@signet.example>"),
        ("Say \"hi\"", "\"Say \\\"hi\\\"\" <s@signet.example>"),
        ("Zoë", "=?utf-8?B?Wm/Dqw==?= <s@signet.example>"),
    ])
    func writesDisplayNamesAsPhrases(name: String, expected: String) throws {
        #expect(try EmailAddress("s@signet.example", displayName: name).headerValue == expected)
    }

    // MARK: - Body encodings

    @Test func quotedPrintableKeepsLinesShortAndRoundTrips() {
        let text = String(repeating: "Un code à usage unique, valable cinq minutes = sécurité. ", count: 5) + "  \n.dot line\nend \t"
        let encoded = MIMEEncoding.quotedPrintable.encode(text)
        for line in encoded.components(separatedBy: "\r\n") {
            #expect(line.utf8.count <= 76)
            #expect(!line.hasSuffix(" ") && !line.hasSuffix("\t"))
            #expect(!line.hasPrefix("."))
        }
        #expect(MIMEDecoding.quotedPrintable(encoded) == MIMEEncoding.normalizingLineBreaks(text))
    }

    @Test func prefersBase64ForMostlyNonASCIIText() throws {
        let text = "認証コードは 123456 です。有効期限は5分です。"
        #expect(MIMEEncoding.preferred(for: text) == .base64)
        #expect(MIMEEncoding.preferred(for: "Your code is 123456.") == .quotedPrintable)
        let message = try EmailMessage(from: Self.sender(), to: Self.alice(), subject: "コード", textBody: text)
        let rendered = try message.render(date: Self.date, messageID: Self.messageID)
        #expect(MIMEDecoding.header("Content-Transfer-Encoding", in: rendered) == "base64")
        let body = try #require(rendered.components(separatedBy: "\r\n\r\n").last)
        #expect(MIMEDecoding.base64(body) == text)
    }

    @Test func normalizesEveryLineBreakToCRLF() {
        #expect(MIMEEncoding.normalizingLineBreaks("a\nb\rc\r\nd\n\re") == "a\r\nb\r\nc\r\nd\r\n\r\ne")
    }

    // MARK: - Privacy

    @Test func descriptionsNameNoAddressOrContent() throws {
        let message = try EmailMessage(from: Self.sender(), to: Self.alice(), subject: "Code 123456", textBody: "123456")
        #expect(!message.description.contains("alice") && !message.description.contains("123456"))
        #expect(try Self.alice().description == "mailbox at example.com")
    }
}
