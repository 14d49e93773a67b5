/// Calendar arithmetic shared by the hand-written time formats (JSON's `writeDate`, Postgres's
/// `Date.postgresText` and `timestamptz` reading, the events' `ce_time`), which skip
/// Foundation's formatter and parser on hot paths.
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

    /// The day counted from 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
    /// `days_from_civil`), the inverse of ``of(daysSinceEpoch:)``. `month` 1...12; `day` is
    /// not checked against the month (``daysIn(month:year:)`` is).
    public static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * ((month + 9) % 12) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The number of days of `month` (1...12) in the proleptic Gregorian `year`.
    public static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
