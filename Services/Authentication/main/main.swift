import AuthenticationService
import ServiceKit

await ServiceRuntime.main(AuthenticationService.self)
