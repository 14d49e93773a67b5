import JSON
import Postgres
import ServiceKit

/// What the oob-notification service holds about a user: nothing yet. Deliveries are not
/// stored (their requests name a vault reference, never the user) and templates are per tenant.
/// Devices, push handles, OOB sessions and approval requests (issue #16) are keyed by user: their
/// tables are added to both functions here (see ``UserDataStore``).
struct OOBUserData: UserDataStore {
    func export(_ user: UserDataSubject, reader: String, on conn: PostgresConnection) async throws -> JSONValue {
        [:]
    }

    func erase(_ user: UserDataSubject, on conn: PostgresConnection) async throws -> [String: Int] {
        [:]
    }
}
