/// Calendar arithmetic shared by the hand-written time formats (JSON's `writeDate`, Postgres's
/// `Date.postgresText`), which skip Foundation's formatter on hot paths.
public enum CivilDate {
    /// The proleptic Gregorian (year, month, day) of a day counted from 1970-01-01
    /// (H. Hinnant's `civil_from_days`). Years before 1 or after 9999 are outside what the
    /// four-digit forms write; no stored time is near them.
    public static func of(daysSinceEpoch: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = daysSinceEpoch + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
