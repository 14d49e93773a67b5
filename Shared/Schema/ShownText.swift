/// Text a user reads on a device before they approve: an approval's action, resource and text,
/// and the values of its custom fields, held to the same rule as what a transaction shows
/// (``TransactionDetails``): no control characters (C0, DEL, C1), no line or paragraph
/// separators, no bidirectional controls and no invisible characters, each of which can make a
/// screen show something other than the bytes signed (a payee read backwards, a forged line).
public enum ShownText {
    /// 1…`characters` grapheme clusters (at most 4 UTF-8 bytes each on average), every scalar
    /// displayable; `\n` only where `newlines`.
    public static func isValid(_ s: String, characters: Int, newlines: Bool = false) -> Bool {
        TransactionDetails.shownField(s, characters: characters, newlines: newlines)
    }
}
