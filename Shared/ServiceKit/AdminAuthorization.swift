import Crypto
import HTTPServer

extension ServiceContext {
    /// Requires the operator's admin token in `Authorization: Bearer`; compared in constant
    /// time over SHA-256 digests so neither content nor length leaks.
    ///
    /// - Throws: 401 `unauthorized`.
    public func requireAdmin(_ request: HTTPRequest) throws -> Principal {
        guard let token = request.bearerToken, token.utf8.count <= 1024,
            ConstantTime.secretsEqual(token, configuration.adminToken)
        else {
            throw HTTPError(.unauthorized, detail: "A valid admin token is required.", headers: [("WWW-Authenticate", "Bearer")])
        }
        return .admin
    }
}
