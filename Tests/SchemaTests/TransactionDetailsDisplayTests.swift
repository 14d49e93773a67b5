import Foundation
import Schema
import Testing

/// What a transaction shows the user (its text, payee, type and batch payees) holds nothing
/// that makes a display show other than the bytes the details hash binds: no control
/// characters (C1's NEXT LINE included), line or paragraph separators, bidirectional controls
/// or invisible characters; newlines in the text only.
@Suite struct TransactionDetailsDisplayTests {
    static func details(text: String = "Pay €10 to ACME", payee: String = "ACME", type: String? = "payment", batchPayee: String? = nil) -> TransactionDetails {
        TransactionDetails(
            text: text, amount: "10.00", currency: "EUR", payee: payee, type: type,
            batch: batchPayee.map { [TransactionDetails.BatchItem(payee: $0, amount: "10.00")] })
    }

    static let hidden: [String] = ["\u{85}", "\u{2028}", "\u{2029}", "\u{202E}", "\u{2066}", "\u{200F}", "\u{061C}", "\u{200B}", "\u{FEFF}", "\u{AD}", "\u{7F}", "\u{9B}"]

    @Test func displayedFieldsRefuseWhatDisplaysOtherwise() {
        #expect(Self.details().violation() == nil)
        #expect(Self.details(text: "Pay €10\nto ACME", payee: "Café Zürich 東京").violation() == nil)
        for c in Self.hidden {
            #expect(Self.details(text: "Pay \(c)10").violation()?.field == "text", "text \(c.unicodeScalars.first!.value)")
            #expect(Self.details(payee: "ACME\(c)").violation()?.field == "payee", "payee \(c.unicodeScalars.first!.value)")
            #expect(Self.details(type: "pay\(c)").violation()?.field == "type", "type \(c.unicodeScalars.first!.value)")
            #expect(Self.details(batchPayee: "X\(c)").violation()?.field == "batch[0].payee", "batch \(c.unicodeScalars.first!.value)")
        }
        // A forged second line in a payee, and in a batch payee.
        #expect(Self.details(payee: "ACME\n- 1.00 EUR to X").violation()?.field == "payee")
        #expect(Self.details(batchPayee: "ACME\n- 1.00 EUR to X").violation()?.field == "batch[0].payee")
        // Bounded in bytes too: a letter with 400 combining marks is one character of 801 bytes.
        #expect(Self.details(payee: "e" + String(repeating: "\u{301}", count: 400)).violation()?.field == "payee")
    }
}
