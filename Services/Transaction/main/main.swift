import TransactionService
import ServiceKit

await ServiceRuntime.main(TransactionService.self)
