import Delivery
import FoundationEssentials
import JSON
import Platform
import Postgres
import Schema
import ServiceKit

/// Sends an approval's push notification to a device that may answer it: APNs for `ios`,
/// FCM for `android`, over HTTP/2 (``PushTransport``). ``ApprovalDeliveryWorker`` calls it for
/// each queued push and retries with backoff on 429, 5xx and transport failures, never on 400,
/// 403 or 410. A token the provider reports gone is marked invalid (`push_token_invalid_at`, a
/// `DeviceChanged` `push_token_invalid` event) and never used again until the device sends a
/// new one.
///
/// The payload carries the approval id and its display text only: never the username, the
/// matching number or anything else the RP sent.
struct PushNotifier: Sendable {
    let context: ServiceContext
    let store: DeviceStore
    let credentials: PushCredentials
    let transport: PushTransport
    let apnsToken: APNsProviderToken?
    let fcmToken: FCMAccessToken?
    let logger: Logger

    init(context: ServiceContext, store: DeviceStore, credentials: PushCredentials, transport: PushTransport = PushTransport()) {
        self.context = context
        self.store = store
        self.credentials = credentials
        self.transport = transport
        apnsToken = credentials.apns.map(APNsProviderToken.init(credentials:))
        fcmToken = credentials.fcm.map { FCMAccessToken(credentials: $0, transport: transport) }
        logger = context.logger
    }

    /// One send to one device, with the approval's display text (``PushTemplate/displayText(_:on:)``).
    func send(_ approval: StoredApproval, text: String, to device: StoredDevice, token: String) async throws {
        switch device.platform {
        case "ios":
            guard let apns = credentials.apns, let apnsToken else { return }
            let payload: JSONValue = .object([
                "aps": .object(["alert": .object(["title": .string("Approval request"), "body": .string(text)]), "category": .string("SIGNET_APPROVAL")]),
                "approvalId": .string(approval.id),
            ])
            // Tokens are hex from the app; a path segment of anything else is refused here.
            guard token.utf8.allSatisfy({ DeviceProof.isBase64URLByte($0) }) else { throw PushCredentialError("device token") }
            let headers = [
                "Authorization: bearer \(try await apnsToken.current())", "Content-Type: application/json", "apns-topic: \(device.appId)",
                "apns-push-type: alert", "apns-priority: 10", "apns-expiration: \(Int(approval.expiresAt.timeIntervalSince1970))",
                "apns-collapse-id: \(approval.id)",
            ]
            let response = try await transport.post(url: "\(apns.url)/3/device/\(token)", headers: headers, body: Array(payload.jsonString.utf8))
            if let error = PushTransport.error(forStatus: response.status, provider: .apns, body: response.body) { throw error }
        default:
            guard let fcm = credentials.fcm, let fcmToken else { return }
            let ttl = max(1, Int(approval.expiresAt.timeIntervalSinceNow))
            let payload: JSONValue = .object([
                "message": .object([
                    "token": .string(token),
                    "data": .object(["approvalId": .string(approval.id), "text": .string(text)]),
                    "android": .object(["priority": .string("HIGH"), "ttl": .string("\(ttl)s"), "collapse_key": .string(approval.id)]),
                ])
            ])
            let headers = ["Authorization: Bearer \(try await fcmToken.current())", "Content-Type: application/json; charset=utf-8"]
            let response = try await transport.post(
                url: "\(fcm.url)/v1/projects/\(fcm.projectID)/messages:send", headers: headers, body: Array(payload.jsonString.utf8))
            if response.status == 401 { await fcmToken.invalidate() }
            if let error = PushTransport.error(forStatus: response.status, provider: .fcm, body: response.body) { throw error }
        }
    }

    func markGone(_ device: StoredDevice) async {
        do {
            try await context.withTransaction { conn in
                guard var current = try await DeviceStore.load(device.id, tenant: device.tenant, on: conn, forUpdate: true),
                    current.sealedPushToken == device.sealedPushToken, current.pushTokenInvalidAt == nil
                else { return }  // a new token arrived meanwhile
                let now = Date()
                current.pushTokenInvalidAt = now
                current.updatedAt = now
                try await DeviceStore.update(current, on: conn)
                try await Outbox.enqueue(current.changed("push_token_invalid", at: now, key: context.configuration.subjectKey), source: .oob, subject: device.tenant, key: device.tenant, on: conn)
            }
        } catch {
            logger.warning("push token not marked invalid", metadata: ["signet.device.id": .string(device.id), LogKey.error: "\(error)"])
        }
    }
}
