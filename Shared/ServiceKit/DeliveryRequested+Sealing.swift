import Crypto
import FoundationEssentials
import Schema

extension DeliveryRequested {
    /// A request to deliver `code`, sealed to the oob-notification service with `key`
    /// (`SIGNET_DELIVERY_KEY`, associated data the new delivery id), valid for `lifetime`; the
    /// message states the minutes left, and `parameters` (a transaction's amount and payee).
    public static func sealing(
        code: String, with key: SealingKeys, tenant: String, channel: String, piiRef: String, template: String = "otp", locale: String = "en",
        lifetime: TimeInterval, parameters: [String: String] = [:], now: Date = Date()
    ) throws -> DeliveryRequested {
        let id = "d_" + Hex.encode(SecureRandom.bytes(16))
        let sealed = try key.seal(Array(code.utf8), associatedData: Array(id.utf8))
        var p = parameters
        p["minutes"] = String(max(1, Int(lifetime / 60)))
        return DeliveryRequested(
            tenantId: tenant, deliveryId: id, channel: channel, piiRef: piiRef, template: template, locale: locale, sealedCode: Base64URL.encode(sealed),
            parameters: p, expiresAt: now.addingTimeInterval(lifetime))
    }
}
